"""The runtime verifier: replay code under torch and confirm (or retract) findings.

``runner`` runs a child interpreter with limits; ``child`` is that interpreter's entry
point (it runs the user's code under ``monitor``); ``replay`` turns the events and the
lines that ran into verdicts for static findings. Only ``monitor`` and ``child`` import
torch: in the child process, or in the process of a host that runs the monitor itself
(``gradguard.frontends.pytest_plugin`` with ``--gradguard``,
``gradguard.frontends.ipython`` once loaded), which ``hosts`` serves.
"""
