package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.List;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** The names of a multi-folder report's runs: {@code --label}, or the folders' names without kvsim's timestamp prefix. */
class ReportLabelsTest {
  @Test
  void aFolderIsNamedWithoutItsTimestampAndEqualNamesAreNumbered() {
    assertEquals(List.of("churn", "churn (2)", "mine", "churn (3)"), HtmlReport.defaultLabels(List.of(Path.of("results/runs/20261126-051900-churn"),
        Path.of("other/20261126-052000-churn"), Path.of("mine"), Path.of("churn"))));
  }

  @Test
  void labelsAreOnePerFolderNonEmptyAndDistinct() {
    HtmlReport.checkLabels(List.of("base", "new"), 2);
    assertEquals("--label: 1 name for 2 folders; give one name per result folder, in order",
        assertThrows(InputException.class, () -> HtmlReport.checkLabels(List.of("base"), 2)).getMessage());
    assertEquals("--label: name 2 is empty", assertThrows(InputException.class, () -> HtmlReport.checkLabels(List.of("a", " "), 2)).getMessage());
    assertEquals("--label: 'a' names two folders; each run needs its own name",
        assertThrows(InputException.class, () -> HtmlReport.checkLabels(List.of("a", "a"), 2)).getMessage());
  }
}
