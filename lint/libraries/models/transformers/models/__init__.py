"""A model of ``transformers.models`` for gradguard: the architectures modelled, each in
its own package (see ``transformers``)."""
