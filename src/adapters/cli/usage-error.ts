/** A problem with what the user asked to deploy, found before anything is sent (exit code 2). */
export class UsageError extends Error {}
