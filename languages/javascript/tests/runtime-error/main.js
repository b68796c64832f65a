console.log("before");
null.boom();
