"""A controller-runtime-like framework on asyncio: informers, workqueues, controllers, a manager.

It knows Kubernetes and nothing of Karmada. See docs/writing-a-controller.md.
"""
