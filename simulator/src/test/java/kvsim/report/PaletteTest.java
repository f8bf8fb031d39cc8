package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import kvsim.registry.AllocatorRegistry;
import kvsim.serving.ServingSystems;
import org.junit.jupiter.api.Test;

/** Note [One colour per name] on {@link Palette}: one colour per name in every chart, never two series of a chart alike. */
class PaletteTest {
  @Test
  void theNamesAreTheRegistriesInOrder() {
    Set<String> names = new LinkedHashSet<>(AllocatorRegistry.names());
    ServingSystems.systems().forEach(s -> names.add(s.name()));
    assertEquals(List.copyOf(names), Palette.NAMES, "Palette.NAMES must follow the allocator registry, then the serving systems");
    assertTrue(Palette.COLOURS.size() >= Palette.NAMES.size(), "a colour per known name");
    assertEquals(Palette.COLOURS.size(), new HashSet<>(Palette.COLOURS).size(), "colours distinct");
  }

  @Test
  void aNameHasTheSameColourInEveryChart() {
    Color firstFit = Palette.styles(List.of("first-fit", "best-fit", "slab")).get(0).colour();
    assertEquals(firstFit, Palette.styles(List.of("paged", "first-fit")).get(1).colour());
    assertEquals(firstFit, Palette.colourOf("first-fit"));
    assertEquals(firstFit, Palette.colourOf("base: first-fit"), "a multi-folder label takes its name's colour");
    assertEquals(Palette.colourOf("vllm"), Palette.styles(List.of("hf-naive", "vllm block-size=8")).get(1).colour(), "a grid cell of vllm");
    assertNotEquals(Palette.colourOf("first-fit"), Palette.colourOf("stitching"), "first-fit and stitching shared one blue before");
  }

  @Test
  void twoRunsOfOneAllocatorGetTwoColoursWithoutTakingAnotherNamesColour() {
    List<Palette.Style> s = Palette.styles(List.of("base: first-fit", "base: best-fit", "new: first-fit", "new: best-fit"));
    assertEquals(Palette.colourOf("first-fit"), s.get(0).colour());
    assertEquals(Palette.colourOf("best-fit"), s.get(1).colour());
    Set<Color> colours = new HashSet<>();
    s.forEach(x -> colours.add(x.colour()));
    assertEquals(4, colours.size(), "four series, four colours: " + s);
    s.forEach(x -> assertEquals(0, x.dash(), "solid while colours last"));
  }

  @Test
  void moreSeriesThanColoursVaryTheDash() {
    List<String> labels = new ArrayList<>();
    for (int i = 0; i < Palette.COLOURS.size() + 3; i++) {
      labels.add("run" + i + ": x" + i);
    }
    List<Palette.Style> s = Palette.styles(labels);
    Set<String> looks = new HashSet<>();
    s.forEach(x -> looks.add(x.hex() + "/" + x.dash()));
    assertEquals(labels.size(), looks.size(), "no two series drawn alike");
    assertEquals(Palette.COLOURS.size(), s.stream().filter(x -> x.dash() == 0).count(), "every colour solid once before any is dashed");
  }
}
