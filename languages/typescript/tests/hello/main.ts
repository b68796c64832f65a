const who: string = "World";
console.log(`Hello, ${who}!`);
