package kvsim.devicemodel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import kvsim.core.ModelPreset;
import org.junit.jupiter.api.Test;

/** The cost-model seam: its defaults are the formulas the serving level always used, and a calibration replaces each part alone. */
class CostModelTest {
  private static final ModelPreset MODEL = ModelPreset.parse("llama-2-7b");
  private static final DeviceSpec DEVICE = DeviceSpec.parse("h100-80");

  @Test
  void theDefaultsAreTheRooflineAndTheDevicesBandwidths() {
    assertEquals(Roofline.of(MODEL, DEVICE), CostCalibration.NONE.forwardTime(MODEL, DEVICE));
    CopyBandwidths copies = (CopyBandwidths) CostCalibration.NONE.copyCost(DEVICE);
    // The formulas the KV managers held before the seam: HBM at 0.8 of peak, read and written; the host link as given.
    assertEquals(DEVICE.hbmBytesPerSecond() * 0.8 / 2, copies.hbmCopyBytesPerSecond());
    assertEquals(DEVICE.hostLinkBytesPerSecond(), copies.hostLinkBytesPerSecond());
    assertEquals(1e9 / (3.35e12 * 0.8 / 2) * 1e9, copies.hbmCopyNanos(1e9), 1e-3);
    assertEquals(1e9 / 53.5e9 * 1e9, copies.hostLinkNanos(1e9), 1e-3);
    assertTrue(CostCalibration.NONE.isNone());
  }

  @Test
  void theRooflineCountsPrefillAndDecodeTokensAlike() {
    Roofline r = Roofline.of(MODEL, DEVICE);
    assertEquals(r.forwardNanos(2048 + 30, 5_000_000_000L), r.forwardNanos(2048, 30, 5_000_000_000L, 31));
    assertEquals(r.forwardNanos(0, 1), r.forwardNanos(0, 0, 1, 0));
  }

  @Test
  void eachEfficiencyReplacesItsOwnDefaultOnly() {
    long prefill = Roofline.of(MODEL, DEVICE).forwardNanos(4096, 0, 0, 1);
    long decode = Roofline.of(MODEL, DEVICE).forwardNanos(0, 8, 1_000_000_000L, 8);
    CostCalibration slowCompute = new CostCalibration(0.25, null, null, null);
    // Prefill is compute-bound: half the default efficiency doubles it; decode is bandwidth-bound and keeps its time.
    assertEquals(2.0, (double) slowCompute.forwardTime(MODEL, DEVICE).forwardNanos(4096, 0, 0, 1) / prefill, 1e-6);
    assertEquals(decode, slowCompute.forwardTime(MODEL, DEVICE).forwardNanos(0, 8, 1_000_000_000L, 8));
    CostCalibration slowMemory = new CostCalibration(null, 0.4, null, null);
    assertEquals(2.0, (double) slowMemory.forwardTime(MODEL, DEVICE).forwardNanos(0, 8, 1_000_000_000L, 8) / decode, 1e-6);
    CostCalibration copies = new CostCalibration(null, null, 0.4, 0.5);
    assertEquals(Roofline.of(MODEL, DEVICE), copies.forwardTime(MODEL, DEVICE), "the copies section leaves the forward pass alone");
    assertEquals(2 * CostCalibration.NONE.copyCost(DEVICE).hbmCopyNanos(1e6), copies.copyCost(DEVICE).hbmCopyNanos(1e6), 1e-9);
    assertEquals(2 * CostCalibration.NONE.copyCost(DEVICE).hostLinkNanos(1e6), copies.copyCost(DEVICE).hostLinkNanos(1e6), 1e-9);
  }

  @Test
  void anEfficiencyOutsideZeroToOneIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new CostCalibration(0.0, null, null, null));
    assertThrows(IllegalArgumentException.class, () -> new CostCalibration(null, 1.5, null, null));
    assertThrows(IllegalArgumentException.class, () -> new CostCalibration(null, null, Double.NaN, null));
    assertThrows(IllegalArgumentException.class, () -> CopyBandwidths.of(DEVICE, 0.8, 0));
    assertThrows(IllegalArgumentException.class, () -> new CopyBandwidths(0, 1));
  }
}
