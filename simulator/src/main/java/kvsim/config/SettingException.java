package kvsim.config;

import kvsim.core.InputException;

/**
 * Bad input at a setting's known origin ({@link Origin#error}): its message names the option or
 * the file, line and field already, so a caller that would otherwise place an error (a grid's
 * cell, a suite's scenario) passes it on as it is.
 */
public final class SettingException extends InputException {
  private static final long serialVersionUID = 1L;

  SettingException(String message) {
    super(message);
  }
}
