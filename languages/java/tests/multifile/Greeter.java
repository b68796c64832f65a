public class Greeter {
    static String greet(String name) {
        return "Hello, " + name + "! (from another file)";
    }
}
