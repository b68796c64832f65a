public class Main {
    public static void main(String[] args) {
        int n = "not a number";
    }
}
