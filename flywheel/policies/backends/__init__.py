"""Policy backends, one module per spec scheme (``openai``, ``hf``, ``vllm``)."""
