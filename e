kvcheck: <input>:--bogus: The following argument was not expected: --bogus (see --help)
