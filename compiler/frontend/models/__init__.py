"""Trained models shipped with the zoo, their held-out data and the scripts that made them.

* ``digits.onnx``: the ``digits`` network of :mod:`compiler.frontend.zoo`;
* ``digits_test.npz``: its held-out split (``images`` uint8 ``(N, 28, 28)``, ``labels`` uint8);
* :mod:`compiler.frontend.models.train_digits`: the script that trains and writes both.
"""
