/** Tab ID `i` of a benchmark's tabs: `prefix` + 8 digits, so every ID matches TAB_ID_PATTERN (8..64 chars). */
export const tabIdOf = (prefix: string, i: number): string => `${prefix}${String(i).padStart(8, '0')}`;
