package kvsim.regress;

/** What happened to one watched metric of one run, against its baseline. */
public enum Verdict {
  /** Moved beyond its tolerance in the worse direction, or became or stopped being undefined: fails the gate. */
  REGRESSED("regressed"),
  /** Moved beyond its tolerance in the better direction. */
  IMPROVED("improved"),
  /** Moved, but within its tolerance. */
  WITHIN_TOLERANCE("within tolerance"),
  /** The same value as the baseline. */
  UNCHANGED("unchanged"),
  /** No compatible baseline to compare with (only while recording baselines with --update). */
  NEW("new");

  private final String label;

  Verdict(String label) {
    this.label = label;
  }

  /** Returns the verdict as tables print it. */
  public String label() {
    return label;
  }
}
