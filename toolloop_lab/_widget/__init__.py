"""The live debugger widget (``LoopDebugger``, public at the package root): the Python half
here, the browser's half in ``src/`` (bundled into ``static/``). Nothing is imported here, so
importing a module of this package for the report or the text view loads no ipywidgets or
anywidget: only ``debugger.py`` does."""
