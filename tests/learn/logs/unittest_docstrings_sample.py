"""The tests whose `python3 -m unittest -v` output is unittest-docstrings.log (not collected: no test_ prefix)."""

import unittest


class AdjacentTests(unittest.TestCase):
    def test_typical(self):
        self.assertEqual(1, 2)

    def test_call_once(self):
        """Test that the predicate is only called once per item."""
        raise ValueError("step must be >= 1")

    def test_large_distance(self):
        """Test distance larger than the length of the iterable"""
        raise ValueError("step must be >= 1")

    def test_grouping(self):
        """Test interaction of adjacent() with groupby_transform()"""
        raise ValueError("step must be >= 1")

    def test_short(self):
        """Adds it."""
        raise ValueError("step must be >= 1")

    def test_ok(self):
        """Test that adjacent() raises an error with negative distance"""


class WindowedTests(unittest.TestCase):
    def test_basic(self):
        for n in (1, 2):
            with self.subTest(n=n):
                raise ValueError("step must be >= 1")
