import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'proto/gen/**', 'bin/**', 'eslint.config.js', 'bundle.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Keep functions small: reconcilers are glue, decisions live in controller/core. Beyond four
      // parameters a function takes one options object, whose names say what each value is.
      complexity: ['error', 12],
      'max-params': ['error', 4],
      'max-depth': ['warn', 4],
    },
  },
);
