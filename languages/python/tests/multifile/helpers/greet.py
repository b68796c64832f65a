def greet(name):
    return f"Hello, {name}! (from another file)"
