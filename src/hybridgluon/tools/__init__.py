"""Command-line tools shipped with hybridgluon (`python -m hybridgluon.tools.<name>`):
im2rec, which lists image folders and packs them into RecordIO files."""
