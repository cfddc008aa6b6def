"""LangChain and LangGraph runs as the loop's typed events: the callback bridge.

``handler.py`` holds :class:`~toolloop_lab.EventBridge`, the langchain-core callback handler
(its docstring says what a bridge can and cannot know); ``run.py`` the lifecycle of one run
seen from outside; ``conversation.py`` what a chat-model callback says was sent;
``watch.py`` :func:`~toolloop_lab.watch`, the handler given to every run of a block.
Private: the public names are the package root's.
"""
