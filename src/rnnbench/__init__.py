"""rnnbench: how fast is each recurrent-network implementation, and which should I use?"""

__version__ = "0.1.0"
