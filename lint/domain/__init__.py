"""The vocabulary of the analysis: what is known of a tensor (``facts``), abstract values
(``values``), the state at a program point (``state``), the events the engine tells the
rules (``events``), an analysed module (``modulescope``), and what comes out of it: a
``Finding``, and the lines a message cites (``citations``).

May import: ``syntax`` (and nothing above it). The engine, the rules, the reports and the
fixes all speak it."""
