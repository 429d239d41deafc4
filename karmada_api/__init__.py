"""Karmada API knowledge in one place: resources, names, labels, annotations, time and conditions.

``controllers``, ``estimator``, ``descheduler`` and ``devplane`` import this; nothing here
does I/O.
"""
