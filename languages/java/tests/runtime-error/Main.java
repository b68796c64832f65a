public class Main {
    public static void main(String[] args) {
        System.out.println("before");
        int zero = 0;
        System.out.println(1 / zero);
    }
}
