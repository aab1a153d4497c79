"""``python -m gradguard``: the same as the ``gradguard`` command."""

from gradguard.frontends.cli import main

if __name__ == "__main__":
    main(prog_name="gradguard")
