package kvsim.devicemodel;

/**
 * Copies at fixed bandwidths, the default {@link CopyCostModel}: an HBM copy moves its bytes at
 * {@code hbmCopyBytesPerSecond}, a swap at {@code hostLinkBytesPerSecond}.
 *
 * <p>The defaults on a device ({@link #of(DeviceSpec)}): an HBM copy reads and writes each byte
 * once at the roofline's achieved share of peak HBM bandwidth ({@link
 * Roofline#DEFAULT_MEMORY_EFFICIENCY}), so it moves bytes at half of that; a swap moves them at the
 * device's effective host-link bandwidth ({@link DeviceSpec#hostLinkBytesPerSecond}, already what a
 * copy engine reaches).
 *
 * @param hbmCopyBytesPerSecond bytes an HBM-to-HBM copy moves per second
 * @param hostLinkBytesPerSecond bytes a host-link copy moves per second
 */
public record CopyBandwidths(double hbmCopyBytesPerSecond, double hostLinkBytesPerSecond) implements CopyCostModel {
  /** Default share of peak HBM bandwidth a copy achieves: the roofline's memory efficiency. */
  public static final double DEFAULT_HBM_EFFICIENCY = Roofline.DEFAULT_MEMORY_EFFICIENCY;
  /** Default share of the device's effective host-link bandwidth a swap achieves. */
  public static final double DEFAULT_HOST_LINK_EFFICIENCY = 1.0;

  public CopyBandwidths {
    if (!(hbmCopyBytesPerSecond > 0) || !(hostLinkBytesPerSecond > 0)) {
      throw new IllegalArgumentException("copy bandwidths must be positive, got " + hbmCopyBytesPerSecond + " and " + hostLinkBytesPerSecond);
    }
  }

  /** The default copy costs on {@code device}. */
  public static CopyBandwidths of(DeviceSpec device) {
    return of(device, DEFAULT_HBM_EFFICIENCY, DEFAULT_HOST_LINK_EFFICIENCY);
  }

  /**
   * The copy costs on {@code device} with these shares of its peak HBM bandwidth and of its
   * effective host-link bandwidth, each in (0, 1].
   */
  public static CopyBandwidths of(DeviceSpec device, double hbmEfficiency, double hostLinkEfficiency) {
    if (!(hbmEfficiency > 0 && hbmEfficiency <= 1) || !(hostLinkEfficiency > 0 && hostLinkEfficiency <= 1)) {
      throw new IllegalArgumentException("copy efficiencies must be in (0, 1], got " + hbmEfficiency + " and " + hostLinkEfficiency);
    }
    return new CopyBandwidths(device.hbmBytesPerSecond() * hbmEfficiency / 2, device.hostLinkBytesPerSecond() * hostLinkEfficiency);
  }

  @Override
  public double hbmCopyNanos(double bytes) {
    return bytes / hbmCopyBytesPerSecond * 1e9;
  }

  @Override
  public double hostLinkNanos(double bytes) {
    return bytes / hostLinkBytesPerSecond * 1e9;
  }
}
