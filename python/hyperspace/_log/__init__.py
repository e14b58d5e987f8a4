"""The parts of :mod:`hyperspace.log`, the pure-Python index log reader (no JVM, no Spark).

``model`` is the data model of ``docs/log-format.md``, ``parse`` turns one entry's JSON into it
(strictly: every field typed and range-checked), ``paths`` finds the log directory on a pyarrow
filesystem and ``signature`` computes the source fingerprint. Import the public names from
:mod:`hyperspace.log`; these modules are private.
"""
