// Every form, by role, on SQLite: see forms.mjs.
import { describe } from 'node:test';
import { walk } from './forms.mjs';

describe('every form, on SQLite', () => walk(false));
