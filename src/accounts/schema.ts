// Account holders and accounts: filled in by the accounts domain.
export {};
