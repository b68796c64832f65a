public class Program {
    public static void main(String[] args) {
        System.out.println(Greeter.greet("World"));
    }
}
