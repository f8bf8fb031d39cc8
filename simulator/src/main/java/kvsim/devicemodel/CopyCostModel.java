package kvsim.devicemodel;

/**
 * The cost model of the copies a serving KV manager makes (README, "Calibration files"): copies
 * within HBM (copy-on-write blocks, a contiguous buffer grown by copying, a prompt copied to a
 * forked sequence) and copies over the host link (vLLM v0's swaps). {@link CopyBandwidths} is the
 * default; a calibration file's {@code copies} section replaces its efficiencies ({@link
 * CostCalibration}).
 *
 * <p>Times are fractional nanoseconds: a manager sums its copies' times and rounds the sum once, so
 * that many small copies are not each rounded.
 */
public interface CopyCostModel {
  /** Returns the time of copying {@code bytes} from HBM to HBM (each byte read once and written once), in nanoseconds. */
  double hbmCopyNanos(double bytes);

  /** Returns the time of moving {@code bytes} over the host link (either way), in nanoseconds. */
  double hostLinkNanos(double bytes);
}
