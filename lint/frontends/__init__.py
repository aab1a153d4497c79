"""The ways in: the command line (``cli``), the language server (``server``), the flake8
and pytest plugins, the IPython extension (``ipython``), ``gradguard explain`` and
``check --watch``.

May import: anything of gradguard; nothing imports it but ``gradguard``'s own entry points."""
