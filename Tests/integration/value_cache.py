"""A client's copy of a listened value, kept up to date from change events, the way Firebase's
clients apply REST streaming events: `put` replaces the value at a path (writing below a
primitive turns it into an object; null removes and prunes emptied parents) and `patch` puts
each of its children. Used by the SSE and native-protocol tests to check that applying every
event gives what a fresh GET returns."""


def set_at(node, keys, value):
    if not keys:
        return value
    if isinstance(node, list):  # an object with integer keys, rendered as an array
        node = {str(i): v for i, v in enumerate(node) if v is not None}
    node = dict(node) if isinstance(node, dict) else {}
    child = set_at(node.get(keys[0]), keys[1:], value)
    if child is None:
        node.pop(keys[0], None)
    else:
        node[keys[0]] = child
    return node or None


def apply_change(cache, op, path, data):
    """`op` is "put" or "patch"; `path` is relative to the listened location ("/a/b")."""
    keys = [k for k in path.split("/") if k]
    if op == "put":
        return set_at(cache, keys, data)
    assert op == "patch" and isinstance(data, dict) and data, (op, path, data)
    for key, value in data.items():
        cache = set_at(cache, keys + [key], value)
    return cache
