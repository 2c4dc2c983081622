"""The tests, one folder per step of probe/ (the same names); helpers shared by all of them beside this file."""
