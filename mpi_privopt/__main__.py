from .entrypoint import leave_on_early_interrupt

leave_on_early_interrupt()  # before the command line loads (cli.main says why)
from .cli import main  # noqa: E402

if __name__ == "__main__":
    main()
