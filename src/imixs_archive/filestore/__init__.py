"""The piece store: attachments cut into content-defined pieces, each stored once under its
SHA-256, files listed piece by piece under their MD5 (the Java service's ``documents`` and
``documents_data``), every byte checked as it is read back, and what nothing refers to
any more collected. ``FileStore`` (``store.py``) is its one door: the snapshot index
(``archive/``) reaches files only through it."""
