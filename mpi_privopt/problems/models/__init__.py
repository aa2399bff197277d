"""Models for the personalised task: the classifiers an agent trains.

Modules
-------
classifiers  :data:`MODELS` and :func:`make_model`: softmax regression (numpy) and the CNN
torch_cnn    the convolutional network in torch (imported only when asked for)
"""
