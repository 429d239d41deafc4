"""A controller-runtime-like framework on asyncio: informers, workqueues, controllers, a manager.

It knows Kubernetes only: the components' flags and process wiring are ``sharedcli``'s (this
package imports nothing of ours; ``__main__`` is a shim). See docs/writing-a-controller.md.
"""
