"""The browser suite: real JupyterLab, Notebook 7 and static pages in chromium."""
