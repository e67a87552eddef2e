"""Result files on disk: the checkpoint a run keeps while it goes, where its files land (a
fallback directory when the disk fails), and comparing two results. The document they hold is
:mod:`loadgen.formats.result_json`'s."""
