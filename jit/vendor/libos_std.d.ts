/** The vetted module's version. */
export declare const version: string;
/** The lines of a text, without their line breaks. */
export declare function lines(text: string): string[];
/** The whitespace-separated words of a text. */
export declare function words(text: string): string[];
/** A text cut to at most `max` characters, with an ellipsis when cut. */
export declare function truncate(text: string, max: number): string;
/** The sum of some numbers. */
export declare function sum(values: Iterable<number>): number;
/** How often each distinct value occurs, most frequent first. */
export declare function counts<T>(values: Iterable<T>): [T, number][];
