from helpers.greet import greet
print(greet("World"))
