"""Our chat models: one base (``base.py``) and ``ScriptedChatModel`` (``scripted.py``), a real
langchain-core chat model that plays back a script of replies. Private: the public name is
the package root's."""
