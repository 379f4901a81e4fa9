"""Name registries for pluggable classes (initializers, metrics, ...), as in
MXNet's ``mx.registry``: ``get_register_func`` / ``get_alias_func`` /
``get_create_func`` make a base class's ``register``, ``alias`` and
``create`` functions."""
import json
import warnings

_REGISTRY = {}


def get_registry(base_class):
    """A copy of the name -> class table of ``base_class``."""
    return dict(_REGISTRY.setdefault(base_class, {}))


def get_register_func(base_class, nickname):
    """A ``register(klass, name=None)`` function for subclasses of
    ``base_class`` (registered under the lower-cased ``name`` or class name;
    a second registration under one name warns and overrides)."""
    registry = _REGISTRY.setdefault(base_class, {})

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise TypeError("Can only register subclass of %s, got %r" % (base_class.__name__, klass))
        name = (name or klass.__name__).lower()
        if name in registry:
            old = registry[name]
            warnings.warn("New %s %s.%s registered with name %s is overriding existing %s %s.%s"
                          % (nickname, klass.__module__, klass.__name__, name, nickname, old.__module__,
                             old.__name__), UserWarning, stacklevel=2)
        registry[name] = klass
        return klass

    register.__doc__ = "Register %s to the %s factory" % (nickname, nickname)
    return register


def get_alias_func(base_class, nickname):
    """An ``alias(*names)`` class decorator registering extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass

        return reg

    return alias


def get_create_func(base_class, nickname):
    """A ``create(name_or_instance, *args, **kwargs)`` function. It accepts an
    instance (returned as is), a registered name, a JSON string
    ``'["name", {kwargs}]'`` or ``'{"<nickname>": name, ...}'``, or a dict."""
    registry = _REGISTRY.setdefault(base_class, {})

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        else:
            if nickname not in kwargs:
                raise TypeError("create: give the %s (a name, a JSON string or an instance)" % nickname)
            name = kwargs.pop(nickname)
        if isinstance(name, base_class):
            if args or kwargs:
                raise ValueError("%s is already an instance. Additional arguments are invalid" % nickname)
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise TypeError("%s must be of string type, got %s" % (nickname, type(name).__name__))
        if name.startswith("["):
            if args or kwargs:
                raise ValueError("create: no extra arguments with a JSON %s" % nickname)
            name, kwargs = json.loads(name)
            return create(name, **kwargs)
        if name.startswith("{"):
            if args or kwargs:
                raise ValueError("create: no extra arguments with a JSON %s" % nickname)
            return create(**json.loads(name))
        key = name.lower()
        if key not in registry:
            raise ValueError("%s is not registered. Please register with %s.register first (known: %s)"
                             % (name, nickname, ", ".join(sorted(registry))))
        return registry[key](*args, **kwargs)

    create.__doc__ = "Create a %s instance from its name, JSON or an instance." % nickname
    return create
