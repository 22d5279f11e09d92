"""The language-model benchmark (``rnnbench lm``): words per second of a whole training loop.

A word-level (or character-level) recurrent language model is trained with truncated
backpropagation through time, as in the PyTorch word_language_model example and Zaremba et al.
(2014); the recurrent layers come from a lane (:mod:`rnnbench.lanes`), so the same loop times
cuDNN, a Python cell loop, or any other implementation. One file per concern:

- :mod:`.data`: corpora, vocabulary, ``batchify``/``get_batch``, the dataset cache.
- :mod:`.model`: embedding -> lane's recurrent layers -> dropout -> decoder.
- :mod:`.presets`: configurations as data (``small``, ``kawakami-2017``, ``zaremba-large``).
- :mod:`.train`: the training loop, synchronised words/s, checkpoints, result rows.
- :mod:`.report`: a table of result rows.
- :mod:`.cli`: the ``lm`` command's options.
"""
