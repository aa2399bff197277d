"""Data loaders: every agent's data set, generated or read from files.

Modules
-------
agent_data   :func:`load_agent_data`: one agent's (X, y) for a consensus problem
synthetic    reproducible synthetic regression/classification data per (seed, agent)
files        reading and checking user .npz/.csv files
images       image data sets (MNIST, CIFAR-10) and their offline stand-ins
image_files  reading the image data sets' files
class_split  splitting an image data set among agents by class (the personalised task)
"""
