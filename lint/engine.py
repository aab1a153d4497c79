"""Placeholder; the interpreter lands in the next commit."""


def analyze(module, rules, report, failures):
    return None
