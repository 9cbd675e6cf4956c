"""Sphinx configuration of memlib's book; `make book` builds it from a generated source tree
(memlib/book.py), never from this folder directly."""

project = "memlib"
author = "memlib"
copyright = "memlib authors"
html_title = "memlib: memorization in deep networks"

extensions = ["myst_nb", "sphinx-mathjax-offline"]  # MathJax from the pip package, not a CDN
nb_execution_mode = "off"  # the notebooks were executed by `make figures`; never again here
nb_merge_streams = True
# Markdown that cells display (the generated prose) is MyST, so its $…$ math renders
nb_render_markdown_format = "myst"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3  # `notebook.ipynb#a-section` links resolve as on a code host

# the figure folders' Markdown tables (and their claims.md) are left out: each notebook's page
# shows its tables where it makes them, and the claims report links there, so they would be
# untitled pages of their own that only a search finds
exclude_patterns = ["_generated/*", "doctrees", "html", "figures/*/*.md"]
suppress_warnings = ["myst.header"]

html_theme = "sphinx_book_theme"
html_theme_options = {"show_toc_level": 2, "use_download_button": False,
                      "use_fullscreen_button": False}
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_context = {"default_mode": "light"}  # a fresh browser otherwise logs "invalid theme mode"
