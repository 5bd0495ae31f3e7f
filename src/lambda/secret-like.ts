/**
 * Which environment variables look like secrets (issue 33, point 12): the construct warns at synth
 * and each function at its cold start when one comes as plain environment, readable in the template
 * and the function's configuration. A warning, not a refusal: the rule errs towards naming a
 * variable, but a name that says what it holds is not a secret (`…_KEY_ID`, `…_PUBLIC_KEY`).
 *
 * The rule, on a name split into words at `_`, `-`, `.` and lower→upper case changes:
 * - its last word (after dropping an encoding word: `PEM`, `B64`, `BASE64`, `HEX`, `JSON`, `VALUE`)
 *   names a secret: `KEY(S)`, `TOKEN(S)`, `SECRET(S)`, `PASSWORD(S)`, `PASSWD`, `PWD`, `PASS`,
 *   `PASSPHRASE`, `CREDENTIAL(S)`, `CREDS`, `AUTH`, `COOKIE(S)`, `DSN`, `SALT`, `PEPPER`, or the
 *   pair `CONNECTION STRING`. So `AUTH_DOMAIN`, `TOKEN_URL`, `SECRET_ARN`, `KEY_ID` and
 *   `PASSWORD_FILE` (where or what, not the value) are not flagged; `BASIC_AUTH`,
 *   `SESSION_COOKIE` and `SENTRY_DSN` are;
 * - or its last word ends with a long secret word glued on (`MYPASSWD`, `DBPASSWORD`,
 *   `GITHUBTOKEN`, `APIKEY`, `PRIVATEKEY`); the short words (`KEY`, `PASS`, `PWD`, `AUTH`)
 *   must stand alone, so `MONKEY`, `BYPASS` and `OAUTH` are not secrets;
 * - except names that say the key is not secret: `PUBLIC_KEY`, `PUBLISHABLE_KEY` (public by
 *   design) and database key names (`PARTITION_KEY`, `SORT_KEY`, `HASH_KEY`, `RANGE_KEY`,
 *   `PRIMARY_KEY`, `FOREIGN_KEY`); and the shell's `PWD`/`OLDPWD` (a directory);
 * - or, whatever the name, a value that carries a credential: a URL with a password in it
 *   (`postgres://user:pw@host/db`) or a PEM private key.
 * `SESSION` alone is not a secret word (`SESSION_TTL`, `SESSION_NAME`); `SESSION_TOKEN` is by its
 * last word.
 */

const SECRET_WORDS = new Set([
  "KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD",
  "PWD", "PASS", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "COOKIE", "COOKIES",
  "DSN", "SALT", "PEPPER",
]);

/** Words distinctive enough to count when glued to the end of another (`MYPASSWD`). */
const GLUED_SECRET_WORD = /(?:PASSWORDS?|PASSWD|PASSPHRASE|SECRETS?|TOKENS?|CREDENTIALS?|APIKEY|PRIVATEKEY)$/;

/** Trailing words that say how a secret is encoded, not what it is (`PRIVATE_KEY_PEM`). */
const ENCODING_WORDS = new Set(["PEM", "B64", "BASE64", "HEX", "JSON", "VALUE"]);

/** A key word after one of these names something that is not secret. */
const NOT_SECRET_KEY_QUALIFIERS = new Set(["PUBLIC", "PUBLISHABLE", "PARTITION", "SORT", "HASH", "RANGE", "PRIMARY", "FOREIGN"]);

/** The shell's own variables (directories). */
const SHELL_NAMES = new Set(["PWD", "OLDPWD"]);

/** `scheme://user:password@…`: a URL with a password in its userinfo. */
const URL_WITH_PASSWORD = /\b[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:[^\s/@]+@/i;
const PEM_PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/** `DB_PASSWD` → `["DB", "PASSWD"]`; `dbPassword` → `["DB", "PASSWORD"]`. */
function wordsOf(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .split(/[_.-]+/)
    .filter((word) => word !== "")
    .map((word) => word.toUpperCase());
}

/**
 * Whether an environment variable looks like a secret by its name (see the module's rule), or by
 * its value when given (a URL with a password, a PEM private key). Never returns or logs the value.
 */
export function looksLikeSecret(name: string, value?: string): boolean {
  if (value !== undefined && (URL_WITH_PASSWORD.test(value) || PEM_PRIVATE_KEY.test(value))) return true;
  if (SHELL_NAMES.has(name.toUpperCase())) return false;
  const words = wordsOf(name);
  if (words.length > 1 && ENCODING_WORDS.has(words.at(-1)!)) words.pop();
  const last = words.at(-1);
  if (last === undefined) return false;
  if (last === "STRING" && words.at(-2) === "CONNECTION") return true;
  if (SECRET_WORDS.has(last)) {
    const isKey = last === "KEY" || last === "KEYS";
    return !(isKey && words.length > 1 && NOT_SECRET_KEY_QUALIFIERS.has(words.at(-2)!));
  }
  return GLUED_SECRET_WORD.test(last);
}
