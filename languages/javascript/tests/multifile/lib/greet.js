exports.greet = (name) => `Hello, ${name}! (from another file)`;
