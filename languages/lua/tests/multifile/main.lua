local greet = require("greet")
print(greet("World"))
