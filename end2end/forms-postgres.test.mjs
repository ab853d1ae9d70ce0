// Every form, by role, on PostgreSQL (the cluster `./dev test` starts): see forms.mjs.
import { describe } from 'node:test';
import { walk } from './forms.mjs';

describe('every form, on PostgreSQL', { skip: !process.env.SLEUTH_TEST_POSTGRES && 'needs SLEUTH_TEST_POSTGRES' }, () => walk(true));
