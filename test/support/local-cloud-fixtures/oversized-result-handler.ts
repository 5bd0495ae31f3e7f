/**
 * A handler for the local function host's payload limits (`dev/local-cloud/lambda-limits.ts`):
 * returns a string of `event.bytes` characters, so a test can ask for a result just under or
 * over Lambda's 6 MB buffered response.
 */
export const handler = async (event: { bytes: number }): Promise<string> => "x".repeat(event.bytes);
