const { greet } = require("./lib/greet");
console.log(greet("World"));
