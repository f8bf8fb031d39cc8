package kvsim.devicemodel;

/** Gives tests of other packages the generated profile fixture of {@link ProfileCostModelTest}. */
public final class ProfileCostModelTestAccess {
  private ProfileCostModelTestAccess() {}

  /** {@link ProfileCostModelTest#fixture}. */
  public static String fixture(long[] tokens, int[] degrees) {
    return ProfileCostModelTest.fixture(tokens, degrees);
  }

  /** {@link ProfileCostModelTest#fixture(long[], int[], double)}. */
  public static String fixture(long[] tokens, int[] degrees, double scale) {
    return ProfileCostModelTest.fixture(tokens, degrees, scale);
  }
}
